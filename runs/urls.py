from django.urls import path

from runs import views

urlpatterns = [
    path("", views.home, name="home"),
]
